import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// The model reader reads a model's `contents` with its own XML reader (not FoundationXML, which
/// links libxml2 and ICU into every start of `backstage`): the XML Xcode writes and a hand edit may
/// add is read as XML says, and a file that is not well formed is refused naming the file and the
/// line, without reading anything outside it.
@Suite struct ModelXMLTests {
    /// A `.xcdatamodel` folder holding `contents`.
    static func model(_ contents: String, in scratch: TemporaryDirectory, bytes: [UInt8] = []) throws -> URL {
        let folder = scratch.url.appending(path: "Kiln.xcdatamodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(bytes + Array(contents.utf8)).write(to: folder.appending(path: "contents"))
        return folder
    }

    @Test func xmlAsXcodeOrAHandEditWritesItIsReadAsXMLSays() throws {
        let scratch = try TemporaryDirectory()
        let contents = [
            #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#,
            #"<!DOCTYPE model [ <!ELEMENT model ANY> <!ATTLIST model type CDATA "x>y"> ]>"#,
            "<!-- a comment, <entity name=\"Ghost\"/> inside it -->",
            #"<model type="com.apple.IDECoreDataModeler.DataModel" userDefinedModelVersionIdentifier='v2 &amp; "b"'>"#,
            #"    <entity name="Firing" representedClassName="Firing" syncable="YES">"#,
            "        <attribute name=\"glaze\" optional=\"YES\" attributeType=\"String\" defaultValueString=\"Tom &amp; &quot;Jerry&quot; &#233;&#x2014;&lt;3&gt;\tend\"/>",
            #"        <attribute name="cone" attributeType="Integer 16" defaultValueString="6"></attribute>"#,
            "        <userInfo><entry key=\"note\" value=\"x\"/><![CDATA[ <entity name=\"Ghost\"/> ]]></userInfo>",
            "    </entity>",
            #"    <entity name="Kiln" syncable="YES"/>"#,
            "</model>",
            "<!-- after the root -->",
            "",
        ].joined(separator: "\r\n")
        let version = try CoreDataModelReader.readVersion(
            try Self.model(contents, in: scratch, bytes: [0xEF, 0xBB, 0xBF]))
        #expect(version.entities.map(\.name) == ["Firing", "Kiln"])
        #expect(version.versionIdentifier == #"v2 & "b""#)
        let glaze = version.entities.first?.attributes.first
        // Entities and character references decoded; a tab in an attribute value reads as a space.
        #expect(glaze?.defaultValueString == "Tom & \"Jerry\" é—<3> end")
        #expect(version.entities.first?.attributes.map(\.name) == ["glaze", "cone"])
    }

    static let malformed: [(String, String)] = [
        ("<model>\n<entity name=\"A\">\n</model>", "</model> where </entity> was expected (line 3)"),
        ("<model>\n<entity name=\"A\"/>", "the document ends inside <model>"),
        ("<model/>\n<model/>", "a second root element (line 2)"),
        ("<model>\n<entity name=\"A&nbsp;B\"/></model>", "&nbsp; is not a reference this reader knows (line 2)"),
        ("<model><entity name=\"A<B\"/></model>", "\"<\" in the value of name in <entity>"),
        ("<model><entity name=A/></model>", "the value of name in <entity> is not quoted"),
        ("<model><entity name=\"A\" name=\"B\"/></model>", "name given twice in <entity>"),
        ("<model><entity name=\"A\"name=\"B\"/></model>", "a space expected between the attributes of <entity>"),
        ("<model><!-- open </model>", "a comment is not closed"),
        ("", "the document has no element"),
        ("Kiln <model/>", "text outside the root element"),
        // No external entity is fetched: the file named is never opened, the reference is refused.
        (
            "<!DOCTYPE model [<!ENTITY secret SYSTEM \"file:///etc/hostname\">]>\n<model><entity name=\"&secret;\"/></model>",
            "&secret; is not a reference this reader knows (line 2)"
        ),
    ]

    @Test(arguments: malformed.indices)
    func aFileThatIsNotWellFormedIsRefusedNamingItAndTheLine(_ index: Int) throws {
        let (contents, cause) = Self.malformed[index]
        let scratch = try TemporaryDirectory()
        let folder = try Self.model(contents, in: scratch)
        #expect {
            try CoreDataModelReader.readVersion(folder)
        } throws: { error in
            let text = "\(error)"
            return text.contains(folder.appending(path: "contents").path)
                && text.contains("is not a well-formed model file: \(cause)")
        }
    }

    /// Bytes this reader would misread are refused: another encoding declared or used, bytes that
    /// are not UTF-8, a control character; lines are counted at a CR as at a LF.
    static let misread: [([UInt8], String)] = [
        (Array(#"<?xml version="1.0" encoding="ISO-8859-1"?><model/>"#.utf8), "it declares the encoding ISO-8859-1"),
        (Array("<model><entity name=\"".utf8) + [0xC9, 0x74, 0xE9] + Array("\"/></model>".utf8), "it is not UTF-8"),
        ([0xFF, 0xFE] + Array("<model/>".utf8).flatMap { [$0, 0] }, "it is UTF-16 or UTF-32"),
        (Array("<model>\r<entity name=\"A\">\r</model>".utf8), "</model> where </entity> was expected (line 3)"),
        (Array("<model><entity name=\"A".utf8) + [0] + Array("\"/></model>".utf8), "a control character"),
        (Array("<model><entity name=\"&#x+41;\"/></model>".utf8), "&#x+41; is not a reference"),
    ]

    @Test(arguments: misread.indices)
    func bytesThisReaderWouldMisreadAreRefused(_ index: Int) throws {
        let (bytes, cause) = Self.misread[index]
        let scratch = try TemporaryDirectory()
        let folder = try Self.model("", in: scratch, bytes: bytes)
        #expect {
            try CoreDataModelReader.readVersion(folder)
        } throws: { error in
            "\(error)".contains("is not a well-formed model file: \(cause)")
        }
    }
}
